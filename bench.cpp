#include "dw_kernel.hpp"
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <random>
#include <cmath>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
int main(){
  engine eng(engine::kind::cpu,0); stream st(eng);
  int cases[][4]={{32,112,112,1},{144,56,56,1},{144,56,56,2},{192,28,28,1},{576,14,14,1},{960,7,7,1},{96,112,112,2},{576,14,14,2}};
  for(auto& cs: cases){
    int C=cs[0],H=cs[1],W=cs[2],S=cs[3]; int OH=(H+2-3)/S+1, OW=(W+2-3)/S+1;
    int C16=(C+15)/16;
    std::vector<float> in((size_t)C16*16*H*W), w((size_t)C16*16*9), b(C16*16), o1((size_t)C16*16*OH*OW), o2(o1.size());
    std::mt19937 rng(1); std::uniform_real_distribution<float> U(-1,1);
    for(auto&v:in)v=U(rng); for(auto&v:w)v=U(rng); for(auto&v:b)v=U(rng);
    // oneDNN
    memory::desc src({1,C,H,W},dt::f32,tag::nChw16c), dst({1,C,OH,OW},dt::f32,tag::nChw16c);
    memory::desc wd({C,1,1,3,3},dt::f32,tag::Goihw16g), bd({C},dt::f32,tag::x);
    post_ops po; po.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 6.f); primitive_attr attr; attr.set_post_ops(po);
    auto pd=convolution_forward::primitive_desc(convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, src, wd, bd, dst,{S,S},{1,1},{1,1}), attr, eng);
    memory ms(src,eng,in.data()), mw(wd,eng,w.data()), mb(bd,eng,b.data()), md(dst,eng,o1.data());
    convolution_forward cv(pd);
    // my weights: [cb][9][16]; Goihw16g: [cb][1][1][3][3][16] same!
    DwParams p{C16,H,W,OH,OW,0.f,6.f};
    auto run1=[&]{cv.execute(st,{{DNNL_ARG_SRC,ms},{DNNL_ARG_WEIGHTS,mw},{DNNL_ARG_BIAS,mb},{DNNL_ARG_DST,md}}); st.wait();};
    auto run2=[&]{ if(S==1) dw_conv<1>(in.data(),w.data(),b.data(),o2.data(),p); else dw_conv<2>(in.data(),w.data(),b.data(),o2.data(),p);};
    run1(); run2();
    double md_=0; for(size_t i=0;i<o1.size();i++) md_=std::max(md_,(double)std::fabs(o1[i]-o2[i]));
    auto tm=[&](auto f){ std::vector<double> t; for(int r=0;r<400;r++){double a=now(); f(); t.push_back(now()-a);} std::sort(t.begin(),t.end()); return t[200]*1e3;};
    double t1=tm(run1), t2=tm(run2);
    double fl=2.0*9*C*OH*OW;
    printf("C%4d %3dx%3d s%d: onednn %.4f ms (%5.1f GF/s) mine %.4f ms (%5.1f GF/s) diff %.2g  impl %s\n",C,H,W,S,t1,fl/t1/1e6,t2,fl/t2/1e6,md_,pd.impl_info_str());
  }
}
